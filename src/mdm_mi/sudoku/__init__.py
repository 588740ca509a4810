"""The Sudoku domain: encoding, generators, data sets, the MDM and its training."""
