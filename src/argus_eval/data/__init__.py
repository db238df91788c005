"""What is asked: typed samples, loaders for official formats, and the ShapesWorld generator."""
