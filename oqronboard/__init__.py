"""OqronBoard: the Django project (settings, URLs, board shell) and an installed app."""
