"""``python -m difftest record|replay|shrink``: see difftest/__init__.py."""
import argparse
import sys


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m difftest")
    sub = ap.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record", help="regenerate fixtures by running MXNet 1.9.1")
    rec.add_argument("--mxnet-python", required=True, help="python of an MXNet 1.9.1 venv")
    rec.add_argument("--scale", type=float, default=1.0, help="multiply program counts")
    rec.add_argument("--seed", type=int, default=0)
    rec.add_argument("--only", nargs="*", help="fixture name prefixes (op-nn, indexing, ...)")
    rep = sub.add_parser("replay", help="run fixtures on gpunda, print differences by class")
    rep.add_argument("--only", nargs="*")
    rep.add_argument("-v", "--verbose", action="store_true")
    rep.add_argument("--write-open", action="store_true",
                     help="record today's unexplained classes as open (difftest/open.json)")
    shr = sub.add_parser("shrink", help="minimise a failing program of a fixture")
    shr.add_argument("program_id")
    shr.add_argument("--mxnet-python", required=True)
    args = ap.parse_args(argv)
    if args.cmd == "record":
        from difftest import record
        record.main(args)
    elif args.cmd == "replay":
        from difftest import replay
        replay.main(args)
    else:
        from difftest import shrink
        shrink.main(args)


if __name__ == "__main__":
    sys.exit(main())
