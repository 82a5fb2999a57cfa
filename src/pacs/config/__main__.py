"""``python -m pacs.config CONFIG...``: :func:`pacs.config.check.main`."""

from pacs.config.check import main

if __name__ == "__main__":
    raise SystemExit(main())
