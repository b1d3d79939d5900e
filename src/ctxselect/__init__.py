"""ctxselect."""
