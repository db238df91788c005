"""The built-in dataset formats' loaders, one module each; FORMATS (data/formats.py) names them lazily."""
