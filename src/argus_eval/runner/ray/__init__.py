"""The Ray executor: a cluster, its options, its model actors, and what a lost cluster was."""
