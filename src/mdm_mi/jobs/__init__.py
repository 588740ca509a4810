"""The verbs of no one domain: shipped backbones (``pretrained``), the MLflow mirror (``tracking``), the
docs' rendered numbers (``docs``) and the cross-domain budgets figure (``budgets_summary``)."""
