from minik.cli import main

main()
