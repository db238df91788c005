"""Training the zoo: recipes' train functions, their data, vocabularies and loop, and the build driver.

Loaded only by `argus zoo train` and the tests; the runtime path (loading `zoo:NAME` checkpoints,
`argus run`, `argus zoo list`) never imports this package.
"""
