#!/usr/bin/env python3
"""Checks every link in the built manual (docs/book by default) without the network.

Every relative href and src in every HTML page must name a file that exists in the build, and
every #fragment must name an id (or a name) in the page it points to. Links with a scheme
(https:, mailto:) are not followed: the manual is checked offline. mdBook's 404 page is
skipped, because it is written for the site's root (`<base href>`) rather than for its place.

Usage: check_book_links.py [BUILD_DIR]. Prints one line per broken link, "FILE: LINK (why)",
and exits 1 if there is any; exits 0 with a one-line count otherwise; 2 if BUILD_DIR holds no
HTML.

Standard library only, so the test command needs nothing more than Python to run it.
"""

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

SKIPPED_PAGES = {"404.html"}
LINK_ATTRIBUTES = {("a", "href"), ("link", "href"), ("img", "src"), ("script", "src")}


class Page(HTMLParser):
    """The ids a page defines and the links it makes."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids = set()
        self.links = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (tag == "a" and name == "name"):
                self.ids.add(value)
            if (tag, name) in LINK_ATTRIBUTES:
                self.links.append(value)


def parse(path):
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/book").resolve()
    pages = {path: parse(path) for path in sorted(root.rglob("*.html"))}
    if not pages:
        print(f"{root} holds no HTML pages; build the book first", file=sys.stderr)
        return 2
    broken = []
    checked = 0
    for path, page in pages.items():
        if path.name in SKIPPED_PAGES:
            continue
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith("//"):
                continue  # outside the book: not followed offline
            checked += 1
            if parts.path.startswith("/"):
                broken.append((path, link, "absolute path: write a relative link"))
                continue
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            if not target.is_relative_to(root):
                broken.append((path, link, "points outside the book"))
                continue
            if not target.exists():
                broken.append((path, link, "no such file"))
                continue
            fragment = unquote(parts.fragment)
            if fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else parse(target).ids
                if fragment not in ids:
                    broken.append((path, link, f"no id {fragment!r} in {target.relative_to(root)}"))
    for path, link, why in broken:
        print(f"{path.relative_to(root)}: {link} ({why})")
    if broken:
        print(f"{len(broken)} broken links of {checked} checked in {root}", file=sys.stderr)
        return 1
    print(f"book links: {checked} checked in {len(pages)} pages, none broken")
    return 0


if __name__ == "__main__":
    sys.exit(main())
