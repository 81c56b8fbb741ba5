package handles

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/mock/gomock"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ma "github.com/koordinator-sh/koordinator/pkg/koordlet/metricsadvisor/framework"
	qmframework "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/framework"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer"
	mockstatesinformer "github.com/koordinator-sh/koordinator/pkg/koordlet/statesinformer/mockstatesinformer"
)

func TestCapture(t *testing.T) {
	h := &Handles{}
	assert.Nil(t, h.StatesInformer())
	assert.Nil(t, h.Pods(), "no pods before koordlet hands the handles over")
	assert.Nil(t, h.MetricCache())
	assert.Nil(t, h.EventRecorder())
	assert.Nil(t, h.CgroupReader())

	ctrl := gomock.NewController(t)
	si := mockstatesinformer.NewMockStatesInformer(ctrl)
	pods := []*statesinformer.PodMeta{{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nm"}}}}
	si.EXPECT().GetAllPods().Return(pods).AnyTimes()

	h.Set(&qmframework.Options{StatesInformer: si, MetricAdvisorConfig: &ma.Config{CollectResUsedInterval: 3 * time.Second}})
	assert.Same(t, si, h.StatesInformer())
	assert.Equal(t, 3*time.Second, h.CollectInterval())
	assert.Equal(t, pods, h.Pods())
}
