"""Helpers several test packages share: small corpora and the indexes built from them."""
