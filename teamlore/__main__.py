from teamlore.cli import main

main()
