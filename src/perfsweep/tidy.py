"""The tidy frame every reader of measurements returns (perfsweep.modeling.extrap_io, perfsweep.cube): one row
per point, region, metric and repetition, the parameters in columns of their own before COLUMNS."""

import os

PathLike = str | os.PathLike[str]
COLUMNS = ["region", "metric", "repetition", "value"]
