"""``python manage.py hash_password``: a Django password hash for ``auth.*.basic.password``."""

import getpass
import sys

from django.contrib.auth.hashers import make_password
from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "Print a password hash to put in auth.proxy/admin.basic.password."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--stdin", action="store_true", help="read the password from standard input"
        )

    def handle(self, *args: object, stdin: bool, **options: object) -> None:
        if stdin:
            password = sys.stdin.readline().rstrip("\n")
        else:
            password = getpass.getpass("Password: ")
            if getpass.getpass("Again: ") != password:
                raise CommandError("the passwords differ")
        if not password:
            raise CommandError("the password must not be empty")
        self.stdout.write(make_password(password))
