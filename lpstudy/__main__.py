from lpstudy.cli import main

main()
