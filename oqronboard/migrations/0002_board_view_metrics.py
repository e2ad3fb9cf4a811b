from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("oqronboard", "0001_initial"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="board",
            options={
                "default_permissions": (),
                "managed": False,
                "permissions": [
                    ("operate", "Can operate the board: retry, cancel, promote, delete, pause, resume"),
                    ("view_metrics", "Can scrape the board's Prometheus metrics at /metrics"),
                ],
                "verbose_name": "board",
            },
        ),
    ]
