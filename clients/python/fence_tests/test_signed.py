"""Guards and the Verifier against sequencers signed by seqd's own signer
(the vectors of clients/fences_test.go): the kind and the name are checked,
a signature that does not check, a plain sequencer where one is required
and anything malformed are refused."""

from __future__ import annotations

import json
import unittest

from seqd.fence import (
    BadSignatureError,
    Guard,
    InvalidSequencerError,
    UnsignedError,
    Verifier,
    WrongLockError,
    load_verify_keys,
    parse_sequencer,
    parse_verify_keys,
)

from .support import env, load_cases

ERRORS = {
    "wrong_name": WrongLockError,
    "wrong_kind": WrongLockError,
    "invalid": InvalidSequencerError,
    "unsigned": UnsignedError,
    "bad_signature": BadSignatureError,
    "wrong_lock": WrongLockError,
}


class SignedSequencerTest(unittest.TestCase):
    def setUp(self) -> None:
        with open(env("SEQD_TEST_FENCE_SIGNED"), encoding="utf-8") as f:
            self.data = json.load(f)
        self.verifier = load_verify_keys(self.data["verify_keys_file"])

    def test_vectors(self) -> None:
        self.assertGreater(len(self.data["vectors"]), 10)
        for v in self.data["vectors"]:
            with self.subTest(v["about"]):
                guard = Guard(v["name"], kind=v["kind"], verifier=self.verifier if v["verify"] else None)
                if v["expect"] == "ok":
                    self.assertEqual(guard.token(v["sequencer"]), int(v["token"]))
                    self.assertEqual(guard.token(v["sequencer"]), int(v["token"]))  # from the cache
                else:
                    with self.assertRaises(ERRORS[v["expect"]]):
                        guard.token(v["sequencer"])

    def test_shared_vectors(self) -> None:
        # The signed sequencers of fence/testdata/dbcases.json, which every
        # language's fences run.
        shared = load_cases()["sequencers"]
        verifier = Verifier(parse_verify_keys(shared["verify_keys"]))
        self.assertGreater(len(shared["vectors"]), 10)
        for v in shared["vectors"]:
            with self.subTest(v["about"]):
                guard = Guard(v["lock"], kind=v["kind"], verifier=verifier)
                if v["expect"] == "ok":
                    self.assertEqual(guard.token(v["sequencer"]), int(v["token"]))
                else:
                    with self.assertRaises(ERRORS[v["expect"]]):
                        guard.token(v["sequencer"])

    def test_without_a_verifier_a_forged_sequencer_passes(self) -> None:
        # The control: what the signature check is for. A guard that only
        # parses takes the tampered token as it comes.
        forged = [v for v in self.data["vectors"] if v["expect"] == "bad_signature" and v["about"].startswith("the token changed")]
        self.assertEqual(len(forged), 1)
        seq = parse_sequencer(forged[0]["sequencer"])
        self.assertEqual(Guard(seq.name).token(forged[0]["sequencer"]), 4712)


if __name__ == "__main__":
    unittest.main()
