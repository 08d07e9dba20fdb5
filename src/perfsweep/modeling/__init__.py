"""Empirical performance models in the Performance Model Normal Form (PMNF), as Extra-P builds them.

Usage::

    from perfsweep.modeling import fit_model
    model = fit_model(X, Y, ["n", "m"])       # X: N x q, Y: N or N x repetitions
    print(model, model.adj_r2)               # 4.41 + 8.03e-5 * m * n * log2(n)   0.99
"""

from perfsweep.modeling.fit import FewValuesWarning, FitOptions, ModelingError, fit_model, fit_models
from perfsweep.modeling.model import Model
from perfsweep.modeling.terms import Factor, Term, dominant_terms, exponent_pairs

__all__ = ["FewValuesWarning", "FitOptions", "Model", "ModelingError", "fit_model", "fit_models", "Factor", "Term",
           "dominant_terms", "exponent_pairs"]
