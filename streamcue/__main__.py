from streamcue.cli import main

main()
