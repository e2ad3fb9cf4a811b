"""A host that includes ``oqronboard.urls`` but forgot to install the board's app."""

SECRET_KEY = "test-only"
INSTALLED_APPS = ["django.contrib.auth", "django.contrib.contenttypes", "django.contrib.sessions",
                  "django.contrib.messages", "oqronkit.contrib.django"]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
OQRON = {"MODE": "memory"}
ROOT_URLCONF = "tests.board.host.urls"
