import unittest

from textstats import top_words


class TopWords(unittest.TestCase):
    def test_ties_alphabetical(self):
        self.assertEqual(top_words("b a b a c", 2), [("a", 2), ("b", 2)])

    def test_n_larger_than_vocabulary(self):
        self.assertEqual(top_words("x y", 10), [("x", 1), ("y", 1)])
