"""stores/embedded."""
