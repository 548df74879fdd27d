import sys

if sys.argv[1:2] == ["run"] and "--help" not in sys.argv and "-h" not in sys.argv:
    # Before the supervisor's imports, so that the zygote preloads meanwhile (see _early).
    from lineup._early import launch_zygote

    launch_zygote()

from lineup.supervisor.cli import main

main()
