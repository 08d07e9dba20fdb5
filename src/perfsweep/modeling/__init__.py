"""Empirical performance models in the Performance Model Normal Form (PMNF), as Extra-P builds them.

Usage::

    from perfsweep.modeling import fit_model
    model = fit_model(X, Y, ["n", "m"])       # X: N x q, Y: N or N x repetitions
    print(model, model.adj_r2)               # 4.41 + 8.03e-5 * m * n * log2(n)   0.99
    model = fit_model(X, Y, ["n", "m"], options=FitOptions(bootstrap=40))  # Y: N x repetitions
    model.lead_share, model.runner_up, model.interval([[8000, 2]])   # how sure the form and prediction are
"""

from perfsweep.errors import ModelingError
from perfsweep.modeling.fit import FewValuesWarning, FitOptions, ModelingWarning, fit_model, fit_models
from perfsweep.modeling.model import Model
from perfsweep.modeling.terms import Factor, Term, dominant_terms, exponent_pairs

__all__ = ["FewValuesWarning", "FitOptions", "Model", "ModelingError", "ModelingWarning", "fit_model", "fit_models",
           "Factor", "Term", "dominant_terms", "exponent_pairs"]
