"""Protein domain: EvolutionaryScale's ESM-C as a masked discrete sequence model, and FASTA I/O.

:mod:`mdm_mi.protein.esmc` imports the ``esm`` package lazily (it takes seconds), so importing this
package stays cheap.
"""
