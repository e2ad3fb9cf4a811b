"""A host project as ``django-admin startproject`` makes it, with the board mounted under
``ops/``: its own home and login pages, Django's default middleware and templates."""
