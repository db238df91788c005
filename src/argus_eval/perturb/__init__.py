"""Image and text perturbations and run conditions: pure and seeded."""
