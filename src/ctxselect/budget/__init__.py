"""budget."""
