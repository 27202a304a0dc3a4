"""Schema introspection for projections of the registry (the CLI's flags, the console).

An op's input class reads as a plan of fields, each with a wire name, a shape and its
constraints. The shapes are the schema module's own; this module is their public face.
"""

from ._shapes import Bool as Bool
from ._shapes import Enum as Enum
from ._shapes import FieldPlan as FieldPlan
from ._shapes import Int as Int
from ._shapes import ListOf as ListOf
from ._shapes import MapOf as MapOf
from ._shapes import Nullable as Nullable
from ._shapes import Obj as Obj
from ._shapes import Opaque as Opaque
from ._shapes import Shape as Shape
from ._shapes import Str as Str
from ._shapes import Tagged as Tagged
from ._shapes import class_plan as class_plan
from ._shapes import shape_of as shape_of
