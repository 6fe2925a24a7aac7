import numpy as np
import pytest

from softsim.mechanics.errors import ParameterError
from softsim.mechanics.materials import (
    check_model,
    element_parameters,
    lame,
    stable_neohookean_parameters,
)


def test_lame_values():
    mu, lam = lame(1000.0, 0.3)
    assert mu == pytest.approx(384.6153846153846, rel=1e-14)
    assert lam == pytest.approx(576.9230769230769, rel=1e-14)
    mu, lam = lame(40.0, 0.0)
    assert (mu, lam) == (20.0, 0.0)
    mu, lam = lame(np.array([1.0, 2.0]), np.array([0.25, -0.5]))
    np.testing.assert_allclose(mu, [0.4, 2.0])
    np.testing.assert_allclose(lam, [0.4, 2.0 * -0.5 / (0.5 * 2.0)])


@pytest.mark.parametrize("young", [-3.0, 0.0, np.nan, np.inf])
def test_lame_rejects_young(young):
    with pytest.raises(ParameterError, match=r"youngModulus must be > 0, got") as info:
        lame(young, 0.3)
    assert isinstance(info.value, ValueError)


def test_lame_young_message_exact():
    with pytest.raises(ParameterError) as info:
        lame(-3.0, 0.3)
    assert str(info.value) == "youngModulus must be > 0, got -3.0"


@pytest.mark.parametrize("poisson", [0.5, -1.0, 0.7, -1.5, np.nan])
def test_lame_rejects_poisson(poisson):
    with pytest.raises(ParameterError, match=r"poissonRatio must be in the open interval \(-1, 0.5\), got"):
        lame(1000.0, poisson)


def test_per_element_error_names_element():
    with pytest.raises(ParameterError, match=r"youngModulus must be > 0, got -1.0 \(element 2\)"):
        element_parameters(np.array([1.0, 2.0, -1.0]), 0.3, 3)
    with pytest.raises(ParameterError, match=r"poissonRatio .* got 0.5 \(element 0\)"):
        element_parameters(1.0, np.array([0.5, 0.2]), 2)
    with pytest.raises(ParameterError, match=r"youngModulus must be a scalar or an array of shape \(4,\)"):
        element_parameters(np.ones(3), 0.3, 4)


def test_element_parameters_broadcast():
    young, poisson, mu, lam = element_parameters(1000.0, np.array([0.3, 0.0]), 2)
    np.testing.assert_array_equal(young, [1000.0, 1000.0])
    np.testing.assert_allclose(mu, [384.6153846153846, 500.0])
    np.testing.assert_allclose(lam, [576.9230769230769, 0.0])


def test_stable_neohookean_reparametrisation():
    mu_p, lam_p, alpha = stable_neohookean_parameters(384.6153846153846, 576.9230769230769)
    assert mu_p == pytest.approx(512.8205128205128)
    assert lam_p == pytest.approx(576.9230769230769 + 320.5128205128205)
    # rest stability: mu' - mu'/4 + lam' (1 - alpha) = 0  (P(I) = 0)
    assert 0.75 * mu_p + lam_p * (1.0 - alpha) == pytest.approx(0.0, abs=1e-12)
    # lam' stays positive over the whole admissible Poisson range
    _, lam_p, _ = stable_neohookean_parameters(*lame(1.0, -0.999))
    assert lam_p > 0.16


def test_check_model_names():
    check_model("stvk", "large")
    with pytest.raises(ParameterError, match="model must be one of linear, corotational"):
        check_model("hooke", "polar")
    with pytest.raises(ParameterError, match="rotation_method must be one of polarF, svdF, large, polar, svd"):
        check_model("corotational", "qr")


@pytest.mark.parametrize("model", ["linear", "corotational", "stvk", "neohookean", "stable_neohookean"])
def test_scene_material_model_is_one_the_elasticity_accepts(model):
    from softsim.mechanics.scene.schema import MaterialSpec, check_parameters

    assert check_parameters(MaterialSpec, "body.material", {"model": model}) == {"model": model}
    check_model(model, "polar")


def test_scene_and_elasticity_refuse_the_same_model_name():
    from softsim.mechanics.scene.schema import MaterialSpec, check_parameters

    with pytest.raises(ParameterError, match="body.material: model: \"hooke\" is not one of linear, corotational, "
                                             "stvk, neohookean, stable_neohookean"):
        check_parameters(MaterialSpec, "body.material", {"model": "hooke"})
    with pytest.raises(ParameterError, match="model must be one of linear, corotational, stvk, neohookean, "
                                             "stable_neohookean, got 'hooke'"):
        check_model("hooke", "polar")
