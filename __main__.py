"""`python -m lineup` and the `lineup` command: the CLI, with `lineup run` started early."""

import sys


def main() -> None:
    if sys.argv[1:2] == ["run"] and "--help" not in sys.argv and "-h" not in sys.argv:
        # Before the supervisor's imports, so that the zygote preloads meanwhile (see _early).
        from lineup._early import launch_zygote, pause_collection

        pause_collection()
        launch_zygote()

    from lineup.supervisor.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
