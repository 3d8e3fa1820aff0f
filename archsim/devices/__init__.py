"""GPUs as devices: a datasheet catalog and a GPU cost source for training ops."""
