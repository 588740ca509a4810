"""Above the domains: the domain table (``domains.DOMAINS``), the one model loader (``loading``),
finding a run's trained models and heads (``locate``), and what the verbs share to run them
(``run``: model flags, a run's model and head, progress bars, notes)."""
