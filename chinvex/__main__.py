from chinvex.entry import main

main()
