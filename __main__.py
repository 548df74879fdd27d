from lineup.supervisor.cli import main

main()
