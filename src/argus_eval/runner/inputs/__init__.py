"""What a model is shown: decoded and perturbed images, text galleries, shared region features."""
