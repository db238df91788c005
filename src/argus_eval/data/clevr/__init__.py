"""CLEVR's own knowledge, shared by the CLEVR loader and the ShapesWorld generator: its attribute
vocabulary and answer set (vocab) and the executor of its functional programs (program)."""
