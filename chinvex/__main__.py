from chinvex.cli import main

main()
