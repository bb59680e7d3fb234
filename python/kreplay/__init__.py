"""kreplay: read kreplay results databases from Python.

    import kreplay
    run = kreplay.load("host/1234_results.db")
    run.launches(); run.counters(wide=True); run.report()

See the package README and docs/user-guide.md in the kreplay repository.
"""

from .expr import Expr, ExprError, format_value
from .report import build_report
from .results import Results, load
from .sections import Catalog

__version__ = "0.1.0"
__all__ = ["load", "Results", "build_report", "Catalog", "Expr", "ExprError", "format_value"]
