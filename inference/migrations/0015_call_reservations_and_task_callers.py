# Reservations per model call (the first of a request counts for rpm); tasks keep their
# caller's key and depth.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("inference", "0014_automation"),
    ]

    operations = [
        migrations.AddField(
            model_name="budgetreservation",
            name="request",
            field=models.BooleanField(db_default=True, default=True),
        ),
        migrations.AddField(
            model_name="agenttask",
            name="api_key_id",
            field=models.IntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="agenttask",
            name="depth",
            field=models.PositiveSmallIntegerField(db_default=1, default=1),
        ),
    ]
