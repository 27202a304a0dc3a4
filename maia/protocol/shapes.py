"""Schema introspection for projections of the registry (the CLI's flags, the console).

An op's input class reads as a plan of fields, each with a wire name, a shape and its
constraints. The shapes are the schema module's own; this module is their public face.
"""

from maia.core._shapes import Bool as Bool
from maia.core._shapes import Enum as Enum
from maia.core._shapes import FieldPlan as FieldPlan
from maia.core._shapes import Int as Int
from maia.core._shapes import ListOf as ListOf
from maia.core._shapes import MapOf as MapOf
from maia.core._shapes import Nullable as Nullable
from maia.core._shapes import Obj as Obj
from maia.core._shapes import Opaque as Opaque
from maia.core._shapes import Shape as Shape
from maia.core._shapes import Str as Str
from maia.core._shapes import Tagged as Tagged
from maia.core._shapes import class_plan as class_plan
from maia.core._shapes import shape_of as shape_of
