"""Pairwise mutual information between the masked positions of a masked discrete sequence model.

:mod:`mdm_mi.mi.probe` computes the ground-truth labels by probing the backbone (exactly, or with a
certified error bound using fewer passes); the learned MI head is trained to reproduce them.
"""
