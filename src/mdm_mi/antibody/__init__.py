"""Natural antibody heavy chains (VH) on a frozen pretrained antibody language model (AntiBERTy):
the data and its IMGT regions, the lineage split, CDR masks and the infilling comparison."""
