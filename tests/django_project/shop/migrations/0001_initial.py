from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True
    dependencies: list[tuple[str, str]] = []  # noqa: RUF012 - Django reads class attributes
    operations = [  # noqa: RUF012
        migrations.CreateModel(
            name="Order",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True,
                                           serialize=False, verbose_name="ID")),
                ("total", models.IntegerField()),
                ("confirmed", models.BooleanField(default=False)),
            ],
        ),
    ]
