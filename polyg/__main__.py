from polyg.cli import main

main()
