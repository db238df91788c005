"""The bottom-up-attention Faster R-CNN (Visual Genome, ResNet-101 C4, attributes) that LXMERT reads.

A reimplementation of the architecture of the published ``unc-nlp/frcnn-vg-finetuned`` checkpoint:
``backbone`` (ResNet stem and res2..res4), ``proposal_generator`` (anchors and the RPN head),
``roi_heads`` (RoI max pooling, the res5 stage, the box predictor with its attribute head), under the
checkpoint's own state-dict names, so its weights load strictly. Inference only, one image at a time.
``provider.FrcnnRegionFeatures`` turns it into LXMERT's region features (the ``frcnn-vg`` provider).
"""
