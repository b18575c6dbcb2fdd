import unittest

from tests.helpers import run


class CommandLine(unittest.TestCase):
    def test_one_and_several_files(self):
        files = {"a.txt": "one two\nthree\n", "b.txt": "four\n"}
        self.assertEqual(run("a.txt", files=files).stdout, "3 2 14 a.txt\n")
        out = run("a.txt", "b.txt", files=files).stdout.splitlines()
        self.assertEqual(out, ["3 2 14 a.txt", "1 1 5 b.txt", "4 3 19 total"])

    def test_missing_file_reported_and_others_counted(self):
        result = run("a.txt", "missing.txt", files={"a.txt": "one\n"})
        self.assertEqual(result.returncode, 1)
        self.assertIn("missing.txt", result.stderr)
        self.assertEqual(result.stdout, "1 1 4 a.txt\n")

    def test_no_arguments_is_a_usage_error(self):
        self.assertEqual(run().returncode, 2)
