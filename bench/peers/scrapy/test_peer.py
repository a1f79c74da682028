"""Tests of the Scrapy peer's helpers: /usr/bin/python3 -m unittest test_peer (in this directory)."""

import os
import tempfile
import unittest

import peer


class RefreshURLTest(unittest.TestCase):
    def test_table(self):
        for content, want in [
            ("0; url=/a", "/a"),
            ("3;URL='b'", "b"),
            ("5, url = \"/c\"", "/c"),
            ("0", None),
            ("0; x=/a", None),
            ("0; url=", None),
        ]:
            with self.subTest(content=content):
                self.assertEqual(peer.refresh_url(content), want)


class ResolveFileTest(unittest.TestCase):
    def write(self, text):
        f = tempfile.NamedTemporaryFile("w", delete=False, suffix=".txt")
        f.write(text)
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def test_entries(self):
        path = self.write("# c\n\nA.test:80:127.0.0.1\nb.test:81:[::1]\n")
        self.assertEqual(peer.read_resolve_file(path), {"a.test": "127.0.0.1", "b.test": "::1"})

    def test_bad_line(self):
        with self.assertRaisesRegex(ValueError, "cannot use resolve line 1"):
            peer.read_resolve_file(self.write("a.test:80\n"))

    def test_empty_path(self):
        self.assertEqual(peer.read_resolve_file(""), {})


class ResolverTest(unittest.TestCase):
    def test_table_answer(self):
        peer.RESOLVE["x.test"] = "127.0.0.9"
        self.addCleanup(peer.RESOLVE.pop, "x.test")
        r = peer.TableResolver.__new__(peer.TableResolver)  # no reactor needed for table names
        got = []
        r.getHostByName("X.test").addCallback(got.append)
        self.assertEqual(got, ["127.0.0.9"])


if __name__ == "__main__":
    unittest.main()
