"""Model providers. Each module is imported only when its provider is first used."""
