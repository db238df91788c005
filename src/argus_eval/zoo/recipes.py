"""The zoo's recipes by model name, registered lazily ("module:attr") so that naming or listing them
imports neither torch nor the training package until one is used.

A recipe (zoo/recipe.py) trains a checkpoint into a directory; `argus zoo train NAME` runs it.
"""

from __future__ import annotations

from argus_eval.registry import Registry
from argus_eval.zoo.recipe import Recipe

RECIPES: Registry[Recipe] = Registry("zoo model", base=Recipe)
RECIPES.register("clip", "argus_eval.zoo.training.train_clip:RECIPE")
RECIPES.register("blip", "argus_eval.zoo.training.train_blip:RECIPE")
# BLIP's retrieval head starts from the captioner's towers, and its VQA head from both, so they follow it.
RECIPES.register("blip_itm", "argus_eval.zoo.training.train_blip_itm:RECIPE")
RECIPES.register("blip_vqa", "argus_eval.zoo.training.train_blip_vqa:RECIPE")
RECIPES.register("lxmert", "argus_eval.zoo.training.train_lxmert:RECIPE")
RECIPES.register("gemma3", "argus_eval.zoo.training.train_gemma3:RECIPE")
RECIPES.register("qwen2_5_vl", "argus_eval.zoo.training.train_qwen:RECIPE")

ORDER: tuple[str, ...] = ("clip", "blip", "blip_itm", "blip_vqa", "lxmert", "gemma3", "qwen2_5_vl")
