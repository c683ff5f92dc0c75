"""``python manage.py serve``: migrate, check the config, bind the port, then run daphne.

The production entry point. The port is bound here, before anything is announced, so a
busy port is a clear error rather than a line saying the gateway serves; daphne then
adopts the bound socket (``--fd``). Its access log is off: the gateway writes one JSON
line per request itself. With ``--workers N`` (N > 1) this process stays as the
supervisor of N daphne processes sharing the socket (``gateway.supervisor``).
"""

import ipaddress
import os
import socket
import sys
import tempfile

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.loader import ConfigError, load_config_text
from agents.schema import Config
from gateway.supervisor import Supervisor


class Command(BaseCommand):
    help = "Migrate the database, check the config and serve the gateway with daphne."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--host", help="IPv4 address to listen on (default: server.bind, else 0.0.0.0)"
        )
        parser.add_argument("--port", type=int, help="default: server.port, else 8421")
        parser.add_argument(
            "--workers",
            type=int,
            default=1,
            help="server processes on the port (e.g. one per core; default 1)",
        )

    def handle(
        self, *args: object, host: str | None, port: int | None, workers: int, **options: object
    ) -> None:
        if workers < 1:
            raise CommandError("--workers takes a number of processes, 1 or more")
        call_command("migrate", interactive=False, verbosity=0)
        config = self._check_config()
        host = host or config.server.bind or "0.0.0.0"
        port = port or config.server.port or 8421
        listener = bind(host, port)
        address = listener.getsockname()[0]
        if config.proxy_auth is None and not ipaddress.ip_address(address).is_loopback:
            self.stderr.write(open_api_warning(host, port))
        processes = f", {workers} worker processes" if workers > 1 else ""
        self.stdout.write(f"Serving on http://{host}:{port}  (admin: /admin, API: /v1{processes})")
        self.stdout.flush()
        daphne = [sys.executable, "-m", "daphne", "--fd", str(listener.fileno()), "-v", "0"]
        command = [*daphne, "gateway.asgi:application"]
        # The project must be importable whatever directory the gateway was started from.
        paths = [str(settings.BASE_DIR), *filter(None, [os.environ.get("PYTHONPATH")])]
        os.environ["PYTHONPATH"] = os.pathsep.join(paths)
        # glibc gives each thread that allocates an arena of its own, up to eight per core,
        # each keeping its own free memory: two hold a process's few threads (the event
        # loop, the database threads, name lookups) in about 3 MB less. An operator's
        # own value is kept.
        os.environ.setdefault("MALLOC_ARENA_MAX", "2")
        if workers == 1:
            os.execv(sys.executable, command)
        # The workers' metrics meet in files of a directory of their own (prometheus-client's
        # multi-process mode), fresh for each start and removed at the end.
        with tempfile.TemporaryDirectory(prefix="gateway-metrics-") as metrics_dir:
            os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
            code = Supervisor(command, workers, listener).run()
        sys.exit(code)

    def _check_config(self) -> Config:
        path = settings.GATEWAY_CONFIG
        try:
            return load_config_text(path.read_text(encoding="utf-8"), path.parent)
        except OSError as error:
            raise CommandError(f"cannot read the config file {path}: {error.strerror}") from error
        except UnicodeDecodeError as error:
            raise CommandError(
                f"the config file {path} is not UTF-8 text (byte {error.start}): {error.reason}"
            ) from error
        except ConfigError as error:
            for problem in error.problems:
                self.stderr.write(f"{path}: {problem}")
            hint = ""
            if any("environment variable" in problem for problem in error.problems):
                hint = (
                    " Set the environment variables it names (e.g. "
                    "OPENAI_API_KEY=sk-... scripts/serve) or edit the file."
                )
            raise CommandError(
                f"the config file is not valid, nothing was started.{hint}"
            ) from error


def open_api_warning(host: str, port: int) -> str:
    return (
        f"warning: /v1 takes no credentials and the gateway listens on {host}: anyone who "
        f"can reach port {port} can spend your provider keys. Turn keys on with "
        "`auth: {proxy: {api_keys: true}}` in the config and mint one with "
        "`python manage.py create_api_key --user <you> --name <name>` (docs/cost-and-keys.md), "
        "or listen on this machine only with --host 127.0.0.1."
    )


def bind(host: str, port: int) -> socket.socket:
    """A listening socket that child processes inherit, or a clear error."""
    if ":" in host:
        raise CommandError("--host takes an IPv4 address (e.g. 0.0.0.0 or 127.0.0.1)")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as error:
        listener.close()
        raise CommandError(
            f"cannot listen on {host}:{port}: {error.strerror} (is another gateway or "
            "program using the port? stop it or choose another with --port)"
        ) from error
    listener.listen(1024)
    listener.set_inheritable(True)
    return listener
