import unittest

from textstats import count_words


class CountWords(unittest.TestCase):
    def test_empty_and_blank(self):
        self.assertEqual(count_words(""), 0)
        self.assertEqual(count_words("  \n "), 0)

    def test_inner_apostrophes_and_hyphens(self):
        self.assertEqual(count_words("don't stop-motion now"), 3)
        self.assertEqual(count_words("'quoted' --"), 1)

    def test_unicode_and_digits(self):
        self.assertEqual(count_words("naïve café 42"), 3)
