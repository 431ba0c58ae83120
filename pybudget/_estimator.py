"""What pybudget's classifiers share on top of scikit-learn's mixins."""
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin


class SVMClassifierBase(ClassifierMixin, BaseEstimator):
    """Sparse input accepted; ``predict`` from ``decision_function`` (1-d scores for two
    classes, positive side ``classes_[1]``; one column per class otherwise)."""

    def __sklearn_is_fitted__(self):
        # classes_ is set last, once a fit has succeeded (a refused fit may already have
        # recorded n_features_in_)
        return hasattr(self, "classes_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def predict(self, X):
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(np.intp)]
        return self.classes_[np.argmax(scores, axis=1)]
