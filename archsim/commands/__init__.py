"""One module per ``archsim`` sub-command; shared argument helpers in :mod:`.common`."""
