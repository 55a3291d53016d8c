#!/usr/bin/env python
from openprogram_site.cli import main

if __name__ == "__main__":
    main()
