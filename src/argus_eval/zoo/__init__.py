"""The built-in model zoo: tiny models of the paper's five architectures trained on ShapesWorld."""
