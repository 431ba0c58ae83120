"""The ``pybudget`` command line (also ``python -m pybudget``)."""
import argparse
import sys

from pybudget.cgrid import DEFAULT_CS, DEFAULT_SELECTIONS, cgrid, format_table


def _cgrid(args):
    rows = cgrid(args.data, Cs=args.C, tol=args.tol, selections=args.selection,
                 loss=args.loss, max_iter=args.max_iter, fit_intercept=args.bias > 0,
                 random_state=args.seed, verbose=not args.quiet)
    print(format_table(rows, title=f"{args.data}, tol {args.tol:g}, loss {args.loss}"))
    return 0


def build_parser():
    ap = argparse.ArgumentParser(prog="pybudget", description="Fast SVM training.")
    sub = ap.add_subparsers(dest="command", required=True)
    g = sub.add_parser("cgrid", help="compare selection strategies over a grid of C",
                       description="Train every selection strategy at every C and print "
                                   "the AVSF paper's table (time, steps, sweeps, dual "
                                   "objective, final KKT violation, test accuracy).")
    g.add_argument("--data", default="debian-lib-small",
                   help="embedded name (a9a, debian-lib-small), a benchmark name in "
                        "$PYBUDGET_DATA, or a LIBSVM file 'train[,test]' (default: %(default)s)")
    g.add_argument("--C", type=float, nargs="+", default=list(DEFAULT_CS), help="grid of C")
    g.add_argument("--tol", type=float, default=0.01, help="KKT tolerance (default %(default)s)")
    g.add_argument("--selection", nargs="+", default=list(DEFAULT_SELECTIONS),
                   choices=["uniform", "shrinking", "avsf", "auto"], help="strategies to compare")
    g.add_argument("--loss", default="hinge", choices=["hinge", "squared_hinge"])
    g.add_argument("--max-iter", type=int, default=100000, help="sweep cap per run")
    g.add_argument("-B", "--bias", type=float, default=-1,
                   help="bias feature value (liblinear -B); <= 0 means no bias (default)")
    g.add_argument("--seed", type=int, default=0, help="random seed")
    g.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    g.set_defaults(func=_cgrid)
    return ap


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, TypeError, FileNotFoundError) as e:
        print(f"pybudget: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
