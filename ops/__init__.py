"""Operations tooling: reference AppServer, agent console, drills, benchmarks."""
